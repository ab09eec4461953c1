/*
 * plan_algos.c - the algorithms across nodes (hierarchical and recursive
 * doubling allreduce), the connections they need, and the choice per call.
 */
#include "core/plan_build.h"

/* The ranks of this rank's node in rank order, or those with this rank's
 * local index on every node in node order; sets g->i. */
static int group_of(const dfccl_topo_t *t, int rank, int same_node, int *ranks, plan_group_t *g)
{
    int m = 0;

    g->i = 0;
    if (same_node) {
        for (int r = 0; r < t->size; r++)
            if (t->node[r] == t->node[rank]) {
                if (r == rank) g->i = m;
                ranks[m++] = r;
            }
    } else {
        /* order[] holds the ranks node by node, nodes in order: one pass */
        for (int v = 0; v < t->size; v++) {
            int r = t->order[v];
            if (t->local[r] == t->local[rank]) {
                if (r == rank) g->i = m;
                ranks[m++] = r;
            }
        }
    }
    g->ranks = ranks;
    g->m = m;
    return m;
}

/* Allreduce as node reduce-scatter (rank l of a node holds shard l reduced
 * over the node), a ring allreduce of each shard among the ranks of the same
 * local index across nodes, and a node allgather of the shards: the data
 * crossing nodes is count / ranks-per-node per rank instead of count.
 *
 * The cross-node ring reads the shard in m sub-blocks, each from its own
 * offset. The executor's rounds move the same offsets of every step's block
 * in turn, so a step may read what an earlier step wrote only if the
 * writer's block does not start after the reader's: the node reduce-scatter
 * therefore runs once per sub-block, writing exactly the blocks the ring
 * reads. With one rank per node there is nothing to reduce on the node, and
 * the ring reads the input itself. */
dfccl_status_t plan_hierarchical(const dfccl_plan_call_t *call, const dfccl_topo_t *t, int rank,
                                 dfccl_plan_t *b)
{
    dfccl_buf_t src = call->in_place ? DFCCL_BUF_RECV : DFCCL_BUF_SEND;
    size_t n = (size_t)t->size;
    int *node_ranks = malloc(sizeof(int) * n), *cross_ranks = malloc(sizeof(int) * n);
    uint64_t *off = malloc(sizeof(uint64_t) * 4 * n), *len = off + n, *sub_off = off + 2 * n,
             *sub_len = off + 3 * n;
    plan_group_t local, cross;
    dfccl_status_t status = DFCCL_OK;
    int L, m;

    if (call->type != DFCCL_COLL_ALLREDUCE || !t->uniform) {
        status = DFCCL_ERR_UNSUPPORTED;
    } else if (node_ranks == NULL || cross_ranks == NULL || off == NULL) {
        status = DFCCL_ERR_NO_MEMORY;
    } else {
        L = group_of(t, rank, 1, node_ranks, &local);
        m = group_of(t, rank, 0, cross_ranks, &cross);
        if (L == 1) {
            plan_ring_allreduce(b, &cross, src, 0, call->count);
        } else {
            for (int c = 0; c < L; c++) plan_split(0, call->count, L, c, &off[c], &len[c]);
            for (int j = 0; j < m; j++) {
                for (int c = 0; c < L; c++) plan_split(off[c], len[c], m, j, &sub_off[c], &sub_len[c]);
                plan_ring_reduce_scatter(b, &local, src, sub_off, sub_len, DFCCL_BUF_RECV,
                                         sub_off[local.i]);
            }
            plan_ring_allreduce(b, &cross, DFCCL_BUF_RECV, off[local.i], len[local.i]);
            plan_ring_allgather(b, &local, DFCCL_BUF_RECV, off[local.i], off, len);
        }
    }
    free(node_ranks);
    free(cross_ranks);
    free(off);
    return status;
}

/* Position of rank in the node-ordered ring, and the rank at a position. */
static int rd_position(const dfccl_topo_t *t, int rank)
{
    return t->pos[rank];
}

static int rd_rank_at(const dfccl_topo_t *t, int v)
{
    return t->order[v];
}

/* Recursive doubling on p = 2^k of the n positions; the first 2 (n - p)
 * fold in pairs first: the even one hands its input to the odd one, which
 * takes part for both and hands the result back at the end. */
typedef struct rd_shape {
    int p, extra, v, vr;   /* vr: position among the p, or -1 (folded away) */
} rd_shape_t;

static void rd_shape(int n, int v, rd_shape_t *s)
{
    s->p = 1;
    while (s->p * 2 <= n) s->p *= 2;
    s->extra = n - s->p;
    s->v = v;
    if (v < 2 * s->extra) s->vr = v % 2 ? v / 2 : -1;
    else s->vr = v - s->extra;
}

static int rd_real(const rd_shape_t *s, int vr)
{
    return vr < s->extra ? vr * 2 + 1 : vr + s->extra;
}

static void peers_add(int *peers, int *n, int max, int peer, int rank);

/* The last rank of node j in the node-ordered ring (order[] holds each
 * node's ranks in rank order): where its chain of the latency algorithm
 * across nodes ends. */
static int node_leader(const dfccl_topo_t *t, int j)
{
    int last = -1;

    if (t->uniform) {
        int L = t->size / t->nnodes;
        return t->order[j * L + L - 1];
    }
    for (int v = 0; v < t->size; v++)
        if (t->node[t->order[v]] == j) last = t->order[v];
    return last;
}

/* The rank at place v of a recursive doubling: of the node-ordered ring
 * (rd_rank_at), or node v's leader (node_leader). */
typedef int (*rd_member_t)(const dfccl_topo_t *t, int v);

/* Recursive doubling over places members, this rank at place v, its
 * buffer in src first and its result in the receive buffer. */
static void rd_exchanges(dfccl_plan_t *b, const dfccl_topo_t *t, int places, int v,
                         rd_member_t member, dfccl_buf_t src, uint64_t n)
{
    rd_shape_t s;

    rd_shape(places, v, &s);
    if (s.vr < 0) {   /* folded: hand the input over, get the result back */
        int partner = member(t, s.v + 1);
        plan_push(b, -1, partner, 0, src, 0, DFCCL_BUF_NONE, 0, n);
        plan_push(b, partner, -1, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, 0, n);
        return;
    }
    if (s.v < 2 * s.extra) {   /* takes part for its even neighbour too */
        plan_push(b, member(t, s.v - 1), -1, 1, src, 0, DFCCL_BUF_RECV, 0, n);
        src = DFCCL_BUF_RECV;
    }
    for (int mask = 1; mask < s.p; mask <<= 1) {
        int partner = member(t, rd_real(&s, s.vr ^ mask));
        /* both partners send before they receive: one chunk each way fits the
         * FIFO, so neither waits on the other's receive */
        plan_push(b, -1, partner, 0, src, 0, DFCCL_BUF_NONE, 0, n);
        plan_push(b, partner, -1, 1, src, 0, DFCCL_BUF_RECV, 0, n);
        src = DFCCL_BUF_RECV;
    }
    if (src != DFCCL_BUF_RECV) plan_push(b, -1, -1, 0, src, 0, DFCCL_BUF_RECV, 0, n);
    if (s.v < 2 * s.extra)
        plan_push(b, -1, member(t, s.v - 1), 0, DFCCL_BUF_RECV, 0, DFCCL_BUF_NONE, 0, n);
}

/* The partners of place v in that exchange, added to peers. */
static void rd_partners(const dfccl_topo_t *t, int places, int v, rd_member_t member, int rank,
                        int *peers, int *n, int max)
{
    rd_shape_t s;

    rd_shape(places, v, &s);
    if (s.vr < 0) {
        peers_add(peers, n, max, member(t, s.v + 1), rank);
        return;
    }
    if (s.v < 2 * s.extra) peers_add(peers, n, max, member(t, s.v - 1), rank);
    for (int mask = 1; mask < s.p; mask <<= 1)
        peers_add(peers, n, max, member(t, rd_real(&s, s.vr ^ mask)), rank);
}

dfccl_status_t plan_recursive_doubling(const dfccl_plan_call_t *call, const dfccl_topo_t *t,
                                       int rank, dfccl_plan_t *b)
{
    if (call->type != DFCCL_COLL_ALLREDUCE) return DFCCL_ERR_UNSUPPORTED;
    rd_exchanges(b, t, t->size, rd_position(t, rank), rd_rank_at,
                 call->in_place ? DFCCL_BUF_RECV : DFCCL_BUF_SEND, call->count);
    return DFCCL_OK;
}

/* Allreduce of small buffers across nodes: a node's ranks reduce along the
 * node's ring (rank order) into its last rank, the leader; the leaders run
 * recursive doubling among the nodes; each leader hands the result on
 * along its node's ring, back round to the first rank and up to the one
 * before it. 2 (L - 1) hand-offs on a node of L ranks and log2(nodes)
 * exchanges across nodes, where the ring waits 2 (ranks - 1) times; every
 * step moves the whole buffer, so it pays only while buffers are small.
 * Peers: the node's ring neighbours, and for leaders other leaders
 * (dfccl_plan_node_rd_peers). */
dfccl_status_t dfccl_plan_node_rd(const dfccl_plan_call_t *call, const dfccl_topo_t *t, int rank,
                                  dfccl_plan_t *b)
{
    dfccl_buf_t src = call->in_place ? DFCCL_BUF_RECV : DFCCL_BUF_SEND;
    uint64_t n = call->count;
    int *ranks, L, l, prev, next;
    plan_group_t g;

    if (t->size < 1 || rank < 0 || rank >= t->size) return DFCCL_ERR_INVALID_PARAM;
    if (call->type != DFCCL_COLL_ALLREDUCE) return DFCCL_ERR_UNSUPPORTED;
    ranks = malloc(sizeof(int) * (size_t)t->size);
    if (ranks == NULL) return DFCCL_ERR_NO_MEMORY;
    b->nsteps = 0;
    b->max_block = 0;
    L = group_of(t, rank, 1, ranks, &g);
    l = g.i;
    prev = ranks[(l + L - 1) % L];
    next = ranks[(l + 1) % L];
    free(ranks);
    if (L > 1) {
        if (l == 0) plan_push(b, -1, next, 0, src, 0, DFCCL_BUF_NONE, 0, n);
        else plan_push(b, prev, l < L - 1 ? next : -1, 1, src, 0,
                       l < L - 1 ? DFCCL_BUF_NONE : DFCCL_BUF_RECV, 0, n);
    }
    if (l == L - 1) {
        rd_exchanges(b, t, t->nnodes, t->node[rank], node_leader, L > 1 ? DFCCL_BUF_RECV : src, n);
        if (L > 1) plan_push(b, -1, next, 0, DFCCL_BUF_RECV, 0, DFCCL_BUF_NONE, 0, n);
    } else {
        plan_push(b, prev, l < L - 2 ? next : -1, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, 0, n);
    }
    return b->cap == 0 ? DFCCL_ERR_INVALID_PARAM : DFCCL_OK;
}

int dfccl_plan_node_rd_peers(const dfccl_topo_t *t, int rank, int *peers, int max)
{
    int n = 0;

    if (rank == node_leader(t, t->node[rank]))
        rd_partners(t, t->nnodes, t->node[rank], node_leader, rank, peers, &n, max);
    return n;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Adds the next rank of this rank's ring in group g (none for one rank). */
static void peers_add(int *peers, int *n, int max, int peer, int rank)
{
    if (peer >= 0 && peer != rank && *n < max) peers[(*n)++] = peer;
}

int dfccl_plan_send_peers(const dfccl_topo_t *t, int rank, int *peers, int max)
{
    int *ranks = malloc(sizeof(int) * (size_t)t->size), n = 0, k = 0;
    plan_group_t g;

    if (ranks == NULL) return -1;
    /* the flat ring: the next position in node order */
    peers_add(peers, &n, max, rd_rank_at(t, (rd_position(t, rank) + 1) % t->size), rank);
    if (t->nnodes > 1 && t->uniform) {
        group_of(t, rank, 1, ranks, &g);
        peers_add(peers, &n, max, g.ranks[(g.i + 1) % g.m], rank);
        group_of(t, rank, 0, ranks, &g);
        peers_add(peers, &n, max, g.ranks[(g.i + 1) % g.m], rank);
    }
    /* recursive doubling, on one node too */
    rd_partners(t, t->size, rd_position(t, rank), rd_rank_at, rank, peers, &n, max);
    free(ranks);
    qsort(peers, (size_t)n, sizeof(int), cmp_int);
    for (int i = 0; i < n; i++)
        if (k == 0 || peers[k - 1] != peers[i]) peers[k++] = peers[i];
    return k;
}

dfccl_algo_t dfccl_plan_choose(const dfccl_plan_call_t *call, const dfccl_topo_t *t,
                               size_t esize, dfccl_algo_t forced, uint64_t rd_max_bytes)
{
    if (call->type != DFCCL_COLL_ALLREDUCE || t->size < 2) return DFCCL_ALGO_RING;
    if (forced == DFCCL_ALGO_RING || forced == DFCCL_ALGO_RD) return forced;
    if (forced == DFCCL_ALGO_HIER)
        return t->nnodes > 1 && t->uniform ? DFCCL_ALGO_HIER : DFCCL_ALGO_RING;
    /* Recursive doubling needs log2(ranks) exchanges where the ring needs
     * 2 (ranks - 1) hand-offs, each a wait for a peer that may have to be
     * scheduled first, on one node as across nodes. Its results are
     * bit-identical on every rank: partners combine the same two values,
     * and the engine's operations are commutative. */
    if ((uint64_t)call->count * esize <= rd_max_bytes) return DFCCL_ALGO_RD;
    /* one node: the ring over shared memory for larger buffers */
    if (t->nnodes == 1) return DFCCL_ALGO_RING;
    if (t->uniform && t->nnodes < t->size) return DFCCL_ALGO_HIER;
    return DFCCL_ALGO_RING;
}
