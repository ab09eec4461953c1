/* plan.c - the plan builder and the ring programs over any group of ranks. */
#include <string.h>
#include "core/plan_build.h"

static const char *const algo_names[DFCCL_ALGO_COUNT] = { "ring", "hierarchical",
                                                          "recursive-doubling" };

const char *dfccl_algo_name(dfccl_algo_t algo)
{
    return (unsigned)algo < DFCCL_ALGO_COUNT ? algo_names[algo] : "unknown";
}

void plan_push(dfccl_plan_t *b, int recv_peer, int send_peer, int reduce,
               dfccl_buf_t src_buf, uint64_t src_off,
               dfccl_buf_t dst_buf, uint64_t dst_off, uint64_t count)
{
    dfccl_step_t *s;
    dfccl_step_peers_t *p;

    if (b->nsteps == b->cap) {   /* a builder bug: max_steps is the contract */
        b->cap = 0;
        return;
    }
    s = &b->steps[b->nsteps];
    p = &b->peers[b->nsteps];
    *s = (dfccl_step_t){ 0 };
    s->chain     = b->nsteps++ > 0;   /* built-in algorithms run in program order */
    s->recv      = recv_peer >= 0;
    s->send      = send_peer >= 0;
    s->reduce    = (uint8_t)reduce;
    s->src_buf   = (uint8_t)src_buf;
    s->src_off   = src_off;
    s->dst_buf   = (uint8_t)dst_buf;
    s->dst_off   = dst_off;
    s->count     = count;
    p->recv      = recv_peer;
    p->send      = send_peer;
    if (count > b->max_block) b->max_block = count;
}

/* ---- blocks of a region ------------------------------------------------- */

void plan_split(uint64_t base, uint64_t len, int parts, int c, uint64_t *off, uint64_t *n)
{
    uint64_t q = len / (uint64_t)parts, rem = len % (uint64_t)parts, uc = (uint64_t)c;
    *n = q + (uc < rem);
    *off = base + uc * q + (uc < rem ? uc : rem);
}

static int ring_at(int i, int delta, int m)
{
    return ((i + delta) % m + m) % m;
}

/* ---- ring phases over a group g[0..m-1], this rank at position i -------- */

void plan_ring_reduce_scatter(dfccl_plan_t *b, const plan_group_t *g, dfccl_buf_t src,
                              const uint64_t *src_off, const uint64_t *len,
                              dfccl_buf_t dst, uint64_t dst_off)
{
    int m = g->m, i = g->i, next = g->ranks[ring_at(i, 1, m)], prev = g->ranks[ring_at(i, -1, m)];
    int c;

    if (m == 1) {
        if (src != dst || src_off[0] != dst_off) plan_push(b, -1, -1, 0, src, src_off[0], dst, dst_off, len[0]);
        return;
    }
    c = ring_at(i, -1, m);
    plan_push(b, -1, next, 0, src, src_off[c], DFCCL_BUF_NONE, 0, len[c]);
    for (int j = 2; j < m; j++) {
        c = ring_at(i, -j, m);
        plan_push(b, prev, next, 1, src, src_off[c], DFCCL_BUF_NONE, 0, len[c]);
    }
    /* In place, a result that goes to the front of the buffer is written
     * over input still to be read only past what has been written: rounds
     * move ascending element ranges, and the movers combine in the received
     * slot where this slice's source and destination overlap. */
    plan_push(b, prev, -1, 1, src, src_off[i], dst, dst_off, len[i]);
}

void plan_ring_allgather(dfccl_plan_t *b, const plan_group_t *g, dfccl_buf_t own_src,
                         uint64_t own_src_off, const uint64_t *off, const uint64_t *len)
{
    int m = g->m, i = g->i, next = g->ranks[ring_at(i, 1, m)], prev = g->ranks[ring_at(i, -1, m)];
    int in_place = own_src == DFCCL_BUF_RECV && own_src_off == off[i];
    int c;

    if (in_place) {
        if (m > 1) plan_push(b, -1, next, 0, DFCCL_BUF_RECV, off[i], DFCCL_BUF_NONE, 0, len[i]);
    } else {
        plan_push(b, -1, m > 1 ? next : -1, 0, own_src, own_src_off, DFCCL_BUF_RECV, off[i], len[i]);
    }
    for (int j = 1; j < m - 1; j++) {
        c = ring_at(i, -j, m);
        plan_push(b, prev, next, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, off[c], len[c]);
    }
    if (m > 1) {
        c = ring_at(i, 1, m);
        plan_push(b, prev, -1, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, off[c], len[c]);
    }
}

/* Allreduce of [base, base + len) of the buffers: reduce-scatter whose last
 * step already sends (recvReduceCopySend), then the allgather. The source
 * has the receive buffer's layout. */
void plan_ring_allreduce(dfccl_plan_t *b, const plan_group_t *g, dfccl_buf_t src,
                         uint64_t base, uint64_t len)
{
    int m = g->m, i = g->i, next = g->ranks[ring_at(i, 1, m)], prev = g->ranks[ring_at(i, -1, m)];
    uint64_t off, n;
    int c;

    if (m == 1) {
        if (src != DFCCL_BUF_RECV) plan_push(b, -1, -1, 0, src, base, DFCCL_BUF_RECV, base, len);
        return;
    }
    c = ring_at(i, -1, m);
    plan_split(base, len, m, c, &off, &n);
    plan_push(b, -1, next, 0, src, off, DFCCL_BUF_NONE, 0, n);
    for (int j = 2; j < m; j++) {
        plan_split(base, len, m, ring_at(i, -j, m), &off, &n);
        plan_push(b, prev, next, 1, src, off, DFCCL_BUF_NONE, 0, n);
    }
    plan_split(base, len, m, i, &off, &n);
    plan_push(b, prev, next, 1, src, off, DFCCL_BUF_RECV, off, n);
    for (int j = 1; j < m - 1; j++) {
        plan_split(base, len, m, ring_at(i, -j, m), &off, &n);
        plan_push(b, prev, next, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, off, n);
    }
    plan_split(base, len, m, ring_at(i, 1, m), &off, &n);
    plan_push(b, prev, -1, 0, DFCCL_BUF_NONE, 0, DFCCL_BUF_RECV, off, n);
}

/* ---- the flat ring: all ranks, node by node ------------------------------ */

/* The ring's order: by node, then by rank; on one node, rank order. */
static void ring_group(const dfccl_topo_t *t, int rank, int *ranks, plan_group_t *g)
{
    for (int j = 0; j < t->size; j++) ranks[j] = t->order[j];
    g->ranks = ranks;
    g->m = t->size;
    g->i = t->pos[rank];
}

void dfccl_topo_derive(int size, const int *node, int *local, int *order, int *pos, int *nnodes,
                       int *uniform)
{
    int n = 0, m = 0, first = -1;

    for (int r = 0; r < size; r++)
        if (node[r] + 1 > n) n = node[r] + 1;
    for (int nd = 0; nd < n; nd++) {
        int k = 0;
        for (int r = 0; r < size; r++)
            if (node[r] == nd) {
                local[r] = k++;
                pos[r] = m;
                order[m++] = r;
            }
        if (first < 0) first = k;
        else if (k != first) first = 0;
    }
    *nnodes = n;
    *uniform = first > 0;
}

static uint64_t displacement(const size_t *counts, int c)
{
    uint64_t d = 0;
    for (int i = 0; i < c; i++) d += counts[i];
    return d;
}

static dfccl_status_t plan_flat_ring(const dfccl_plan_call_t *call, const dfccl_topo_t *t,
                                     int rank, dfccl_plan_t *b)
{
    dfccl_buf_t src = call->in_place ? DFCCL_BUF_RECV : DFCCL_BUF_SEND;
    int n = t->size, ranks_buf[PLAN_GROUP_MAX], *ranks = ranks_buf;
    uint64_t offs[PLAN_GROUP_MAX], lens[PLAN_GROUP_MAX], *off = offs, *len = lens;
    plan_group_t g;
    dfccl_status_t status = DFCCL_OK;

    if (n > PLAN_GROUP_MAX) {   /* large communicators: scratch from the heap */
        ranks = malloc(sizeof(int) * (size_t)n);
        off = malloc(sizeof(uint64_t) * (size_t)n);
        len = malloc(sizeof(uint64_t) * (size_t)n);
        if (ranks == NULL || off == NULL || len == NULL) {
            status = DFCCL_ERR_NO_MEMORY;
            goto out;
        }
    }
    ring_group(t, rank, ranks, &g);
    switch (call->type) {
    case DFCCL_COLL_ALLREDUCE:
        plan_ring_allreduce(b, &g, src, 0, call->count);
        break;
    case DFCCL_COLL_ALLGATHER:
        for (int j = 0; j < n; j++) {
            off[j] = (uint64_t)ranks[j] * call->count;
            len[j] = call->count;
        }
        plan_ring_allgather(b, &g, src, call->in_place ? (uint64_t)rank * call->count : 0, off, len);
        break;
    case DFCCL_COLL_REDUCE_SCATTER:
        for (int j = 0; j < n; j++) {
            off[j] = displacement(call->counts, ranks[j]);
            len[j] = call->counts[ranks[j]];
        }
        plan_ring_reduce_scatter(b, &g, src, off, len, DFCCL_BUF_RECV, 0);
        break;
    default:
        status = DFCCL_ERR_INVALID_PARAM;
    }
out:
    if (ranks != ranks_buf) {
        free(ranks);
        free(off);
        free(len);
    }
    return status;
}

uint32_t dfccl_plan_max_steps(int size)
{
    /* ring allreduce: 2 (size - 1) transfers; hierarchical on m nodes of L
     * ranks: m (L - 1) + 2 (m - 1) + L - 1 = size + m + L - 3, at most
     * 2 size - 2 as m + L <= size + 1; recursive doubling: 2 per doubling,
     * plus the fold and unfold; size 1 needs one copy */
    uint32_t rd = 4;
    for (int p = 1; p < size; p <<= 1) rd += 2;
    return 2u * (uint32_t)size + 1u > rd ? 2u * (uint32_t)size + 1u : rd;
}

dfccl_status_t dfccl_plan_build(dfccl_algo_t algo, const dfccl_plan_call_t *call,
                                const dfccl_topo_t *topo, int rank, dfccl_plan_t *plan)
{
    dfccl_status_t status;

    if (topo->size < 1 || rank < 0 || rank >= topo->size) return DFCCL_ERR_INVALID_PARAM;
    if (call->type == DFCCL_COLL_REDUCE_SCATTER && call->counts == NULL)
        return DFCCL_ERR_INVALID_PARAM;
    plan->nsteps = 0;
    plan->max_block = 0;
    switch (algo) {
    case DFCCL_ALGO_RING: status = plan_flat_ring(call, topo, rank, plan); break;
    case DFCCL_ALGO_HIER: status = plan_hierarchical(call, topo, rank, plan); break;
    case DFCCL_ALGO_RD:   status = plan_recursive_doubling(call, topo, rank, plan); break;
    default:              status = DFCCL_ERR_INVALID_PARAM;
    }
    if (status == DFCCL_OK && plan->cap == 0) status = DFCCL_ERR_INVALID_PARAM;
    return status;
}

void dfccl_plan_ring_peers(int size, const int *node, int rank, int *prev, int *next)
{
    int nnodes = 0, me = node != NULL ? node[rank] : 0;
    int after = -1, before = -1;   /* nearest ranks of our node above and below us */

    if (node == NULL) {
        *prev = (rank + size - 1) % size;
        *next = (rank + 1) % size;
        return;
    }
    for (int r = 0; r < size; r++) {
        if (node[r] + 1 > nnodes) nnodes = node[r] + 1;
        if (node[r] != me || r == rank) continue;
        if (r > rank && after < 0) after = r;
        if (r < rank) before = r;
    }
    if (after < 0) {
        /* the first rank of the next node that has ranks (ours, around) */
        for (int k = 1; k <= nnodes && after < 0; k++)
            for (int r = 0; r < size && after < 0; r++)
                if (node[r] == (me + k) % nnodes) after = r;
    }
    if (before < 0) {
        /* the last rank of the node before */
        for (int k = 1; k <= nnodes && before < 0; k++)
            for (int r = size - 1; r >= 0 && before < 0; r--)
                if (node[r] == (me + nnodes - k) % nnodes) before = r;
    }
    *prev = before;
    *next = after;
}

dfccl_status_t dfccl_plan_ring(dfccl_coll_type_t type, int rank, int size, const int *node,
                               int in_place, size_t count, const size_t *counts,
                               dfccl_step_t *steps, uint32_t *nsteps, uint64_t *max_block)
{
    dfccl_plan_call_t call = { type, in_place, count, counts };
    uint32_t cap = dfccl_plan_max_steps(size);
    dfccl_step_peers_t *peers = malloc(sizeof(*peers) * cap);
    size_t n = (size_t)(size > 0 ? size : 1);
    int *where = calloc(n, sizeof(int)), *local = malloc(sizeof(int) * n);
    int *order = malloc(sizeof(int) * n), *pos = malloc(sizeof(int) * n);
    dfccl_topo_t topo = { size, 1, where, local, order, pos, 1 };
    dfccl_plan_t plan = { .steps = steps, .peers = peers, .cap = cap };
    dfccl_status_t status = DFCCL_ERR_NO_MEMORY;

    if (size < 1 || rank < 0 || rank >= size) status = DFCCL_ERR_INVALID_PARAM;
    else if (peers != NULL && where != NULL && local != NULL && order != NULL && pos != NULL) {
        if (node != NULL) memcpy(where, node, sizeof(int) * n);
        dfccl_topo_derive(size, where, local, order, pos, &topo.nnodes, &topo.uniform);
        status = dfccl_plan_build(DFCCL_ALGO_RING, &call, &topo, rank, &plan);
    }
    /* one FIFO each way: the ring's previous and next rank */
    for (uint32_t i = 0; status == DFCCL_OK && i < plan.nsteps; i++) {
        steps[i].recv_conn = 0;
        steps[i].send_conn = 0;
    }
    free(peers);
    free(where);
    free(local);
    free(order);
    free(pos);
    if (status != DFCCL_OK) return status;
    *nsteps = plan.nsteps;
    *max_block = plan.max_block;
    return DFCCL_OK;
}

int dfccl_plan_parts_allowed(dfccl_coll_type_t type, int in_place, const size_t *counts, int size)
{
    uint64_t displ = 0;

    if (type != DFCCL_COLL_REDUCE_SCATTER || !in_place) return 1;
    for (int r = 0; r < size; r++) {
        if (displ != 0 && counts[r] != 0) return 0;   /* rank r moves its result */
        displ += counts[r];
    }
    return 1;
}

uint64_t dfccl_plan_chunk_elems(size_t slot_bytes, uint32_t nslots, size_t esize)
{
    uint32_t slices = nslots / 2 ? nslots / 2 : 1;
    return (uint64_t)slices * (slot_bytes / esize);
}
