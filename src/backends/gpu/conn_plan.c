/*
 * conn_plan.c - a GPU communicator's connections (conn_plan.h).
 */
#include "backends/gpu/conn_plan.h"
#include "core/exec_cpu.h"   /* gpu_shared.h's executor, as host code sees it */
#include "backends/gpu/gpu_shared.h"
#include <stdio.h>
#include <stdlib.h>
#include "core/plan.h"

static int gpu_conn_find(const int *list, int n, int peer)
{
    for (int i = 0; i < n; i++)
        if (list[i] == peer) return i;
    return -1;
}

/* Appends peer to a connection list once (-1: none); 0 when the list is
 * full. */
static int gpu_conn_add(int *list, int *n, int peer)
{
    if (peer < 0 || gpu_conn_find(list, *n, peer) >= 0) return 1;
    if (*n == GPU_CONN0_MAX) return 0;
    list[(*n)++] = peer;
    return 1;
}

void gpu_conn_plan_make(const dfccl_topo_t *t, int rank, unsigned wants,
                        const gpu_plan_peers_t *files, gpu_conn_plan_t *plan)
{
    int n = t->size, me = t->node[rank], v = t->pos[rank], l = t->local[rank], L = 0;
    int partners[GPU_CONN0_MAX], npartners = 0;

    plan->spans = t->nnodes > 1;
    plan->all_peers = !plan->spans && n <= DFCCL_GPU_ALL_PEER_RANKS;
    /* the flat ring: order[] holds the ranks node by node (as
     * dfccl_plan_ring_peers walks them) */
    plan->ring_prev = t->order[(v + n - 1) % n];
    plan->ring_next = t->order[(v + 1) % n];
    plan->net_prev = t->node[plan->ring_prev] != me ? plan->ring_prev : -1;
    plan->net_next = t->node[plan->ring_next] != me ? plan->ring_next : -1;
    plan->node_prev = plan->net_prev < 0 && n > 1 ? plan->ring_prev : -1;
    plan->node_next = plan->net_next < 0 && n > 1 ? plan->ring_next : -1;
    plan->cross_prev = plan->cross_next = -1;
    plan->hier = (wants & GPU_CONN_WANT_HIER) && plan->spans && t->uniform && t->nnodes < n;
    plan->rd = (wants & GPU_CONN_WANT_RD) && plan->spans && t->nnodes <= GPU_CONN_RD_MAX_NODES;
    if (plan->hier || plan->rd) {
        /* the ring of our node's ranks, closed: order[] holds them in a row */
        int first = v - l;
        while (first + L < n && t->node[t->order[first + L]] == me) L++;
        plan->node_prev = L > 1 ? t->order[first + (l + L - 1) % L] : -1;
        plan->node_next = L > 1 ? t->order[first + (l + 1) % L] : -1;
    }
    if (plan->hier) {
        /* uniform: node k's ranks sit at order[k * L .. (k + 1) * L) (L as
         * counted above) */
        plan->cross_prev = t->order[((me + t->nnodes - 1) % t->nnodes) * L + l];
        plan->cross_next = t->order[((me + 1) % t->nnodes) * L + l];
    }
    plan->nrecv = plan->nsend = 0;
    if (n > 1) {
        gpu_conn_add(plan->recv_peer, &plan->nrecv, plan->ring_prev);
        gpu_conn_add(plan->send_peer, &plan->nsend, plan->ring_next);
    }
    gpu_conn_add(plan->recv_peer, &plan->nrecv, plan->node_prev);
    gpu_conn_add(plan->send_peer, &plan->nsend, plan->node_next);
    gpu_conn_add(plan->recv_peer, &plan->nrecv, plan->cross_prev);
    gpu_conn_add(plan->send_peer, &plan->nsend, plan->cross_next);
    plan->nrecv_all = plan->nrecv;
    plan->nsend_all = plan->nsend;
    /* a partner is met both ways: it sends to us as we send to it */
    if (plan->rd)
        npartners = dfccl_plan_node_rd_peers(t, rank, partners, GPU_CONN0_MAX - GPU_CONN_MAX);
    for (int i = 0; i < npartners; i++) {
        gpu_conn_add(plan->recv_peer, &plan->nrecv, partners[i]);
        gpu_conn_add(plan->send_peer, &plan->nsend, partners[i]);
    }
    /* the plan files' peers, each way as the plans use them */
    plan->files = files;
    plan->overflow = 0;
    for (int i = files ? files->recv_at[rank] : 0; files && i < files->recv_at[rank + 1]; i++)
        plan->overflow |= !gpu_conn_add(plan->recv_peer, &plan->nrecv, files->recv[i]);
    for (int i = files ? files->send_at[rank] : 0; files && i < files->send_at[rank + 1]; i++)
        plan->overflow |= !gpu_conn_add(plan->send_peer, &plan->nsend, files->send[i]);
}

unsigned gpu_conn_plan_wants(const gpu_conn_plan_t *plan)
{
    return (plan->hier ? GPU_CONN_WANT_HIER : 0) | (plan->rd ? GPU_CONN_WANT_RD : 0);
}

/* Connections of a list to other nodes than rank's. */
static int gpu_conn_net_count(const int *list, int n, const dfccl_topo_t *t, int rank)
{
    int k = 0;

    for (int i = 0; i < n; i++) k += t->node[list[i]] != t->node[rank];
    return k;
}

int gpu_conn_plan_files_fit(const dfccl_topo_t *t, unsigned wants, const gpu_plan_peers_t *files,
                            char *why, size_t len)
{
    for (int q = 0; q < t->size; q++) {
        gpu_conn_plan_t p;
        gpu_conn_plan_make(t, q, wants, files, &p);
        if (p.overflow) {
            snprintf(why, len, "rank %d would need more than %d connections each way",
                     q, GPU_CONN0_MAX);
            return 0;
        }
        if (gpu_conn_net_count(p.recv_peer, p.nrecv, t, q) > GPU_CONN_NET_MAX ||
            gpu_conn_net_count(p.send_peer, p.nsend, t, q) > GPU_CONN_NET_MAX) {
            snprintf(why, len, "rank %d would need more than %d connections each way to other"
                     " nodes", q, GPU_CONN_NET_MAX);
            return 0;
        }
    }
    return 1;
}

int gpu_conn_plan_recv_index(const gpu_conn_plan_t *plan, int peer)
{
    return gpu_conn_find(plan->recv_peer, plan->nrecv, peer);
}

int gpu_conn_plan_send_index(const gpu_conn_plan_t *plan, int peer)
{
    return gpu_conn_find(plan->send_peer, plan->nsend, peer);
}

/* peer's place among the list's peers on other nodes than rank's. */
static int gpu_conn_net_index(const int *list, int n, const dfccl_topo_t *t, int rank, int peer)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        if (t->node[list[i]] == t->node[rank]) continue;
        if (list[i] == peer) return k;
        k++;
    }
    return -1;
}

int gpu_conn_plan_net_recv_index(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                                 int peer)
{
    return gpu_conn_net_index(plan->recv_peer, plan->nrecv, t, rank, peer);
}

int gpu_conn_plan_net_send_index(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                                 int peer)
{
    return gpu_conn_net_index(plan->send_peer, plan->nsend, t, rank, peer);
}

size_t gpu_conn_plan_net_at(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                            const gpu_net_strides_t *st, int sending, int peer, size_t *credit)
{
    size_t at = 0, found = SIZE_MAX, credits = 0;

    /* receiving connections, then sending ones, then the credit words */
    for (int way = 0; way < 2; way++) {
        const int *peers = way ? plan->send_peer : plan->recv_peer;
        int count = way ? plan->nsend : plan->nrecv, every = way ? plan->nsend_all : plan->nrecv_all;
        for (int i = 0; i < count; i++) {
            unsigned nch = i < every ? st->nchannels : 1;
            if (t->node[peers[i]] == t->node[rank]) continue;
            if (way == sending && peers[i] == peer) {
                found = at;
                if (credit != NULL) *credit = credits;   /* made absolute below */
            }
            at += nch * (way ? st->send : st->recv);
            if (way) credits += nch;
        }
    }
    if (peer < 0) return at + credits * st->credit;
    if (found != SIZE_MAX && credit != NULL) *credit = at + *credit * st->credit;
    return found;
}

int gpu_conn_plan_maps(const gpu_conn_plan_t *plan, const int *node, int rank, int r)
{
    if (r == rank || node[r] != node[rank]) return 0;
    /* on our node, a send connection's FIFO lies in the peer's region */
    return plan->all_peers || gpu_conn_find(plan->send_peer, plan->nsend, r) >= 0;
}

int gpu_conn_plan_waits_on(const gpu_conn_plan_t *plan, const int *node, int rank, int r)
{
    if (r == rank || node[r] != node[rank]) return 0;
    return plan->all_peers || gpu_conn_find(plan->send_peer, plan->nsend, r) >= 0 ||
           gpu_conn_find(plan->recv_peer, plan->nrecv, r) >= 0;
}

int gpu_conn_plan_tells(const gpu_conn_plan_t *plan, const int *node, int rank, int r)
{
    return r != rank && r == plan->node_next && node[r] == node[rank];
}

dfccl_status_t gpu_conn_plan_program(const gpu_conn_plan_t *plan, const dfccl_topo_t *t, int rank,
                                     dfccl_algo_t algo, const dfccl_plan_call_t *call,
                                     dfccl_step_t *steps, uint32_t *nsteps, uint64_t *max_block)
{
    uint32_t cap = dfccl_plan_max_steps(t->size);
    dfccl_step_peers_t *peers = malloc(sizeof(*peers) * cap);
    dfccl_plan_t b = { .steps = steps, .peers = peers, .cap = cap };
    dfccl_status_t status;

    if (peers == NULL) return DFCCL_ERR_NO_MEMORY;
    if (algo == DFCCL_ALGO_RD) status = plan->rd ? dfccl_plan_node_rd(call, t, rank, &b)
                                                 : DFCCL_ERR_UNSUPPORTED;
    else if (algo != DFCCL_ALGO_RING && algo != DFCCL_ALGO_HIER) status = DFCCL_ERR_UNSUPPORTED;
    else status = dfccl_plan_build(algo, call, t, rank, &b);
    for (uint32_t i = 0; status == DFCCL_OK && i < b.nsteps; i++) {
        dfccl_step_t *s = &steps[i];
        int rc = s->recv ? gpu_conn_plan_recv_index(plan, peers[i].recv) : 0;
        int sc = s->send ? gpu_conn_plan_send_index(plan, peers[i].send) : 0;
        /* the kernel runs chains over one connection each way per step;
         * only RD's programs, on channel 0 alone, reach its partners */
        if (rc < 0 || sc < 0 || s->send > 1 || s->ndeps > 0 || (i > 0 && !s->chain) ||
            (algo != DFCCL_ALGO_RD &&
             ((s->recv && rc >= plan->nrecv_all) || (s->send && sc >= plan->nsend_all))))
            status = DFCCL_ERR_UNSUPPORTED;
        s->recv_conn = (uint8_t)(rc < 0 ? 0 : rc);
        s->send_conn = (uint8_t)(sc < 0 ? 0 : sc);
    }
    free(peers);
    if (status != DFCCL_OK) return status;
    *nsteps = b.nsteps;
    *max_block = b.max_block;
    return DFCCL_OK;
}

_Static_assert(GPU_CONN_MAX == DFCCL_GPU_MAX_CONNS && GPU_CONN0_MAX == DFCCL_GPU_MAX_CONNS0,
               "a plan's connections fit the table");
_Static_assert(GPU_CONN_RD_MAX_NODES < 8192 && GPU_CONN0_MAX - GPU_CONN_MAX >= 13,
               "a leader's partners fit channel 0's connections");
_Static_assert(sizeof(gpu_conn_status_t) <= GPU_CONN_STATUS_BYTES, "the status fits its place");

static size_t gpu_conn_align(size_t bytes, size_t align)
{
    return (bytes + align - 1) / align * align;
}

size_t gpu_conn_inbox_bytes(int size, size_t align)
{
    if (size > DFCCL_GPU_ALL_PEER_RANKS) return 0;
    return gpu_conn_align(DFCCL_GPU_INBOX_BYTES(size), align);
}

size_t gpu_conn_region_bytes(int size, unsigned nchannels, size_t fifo_bytes, size_t align)
{
    return gpu_conn_inbox_bytes(size, align) + (size_t)nchannels * gpu_conn_align(fifo_bytes, align) +
           gpu_conn_align(GPU_CONN_STATUS_BYTES, align);
}

size_t gpu_conn_plan_fifo_at(int size, unsigned nchannels, size_t fifo_bytes, size_t align, int k)
{
    return gpu_conn_inbox_bytes(size, align) + (nchannels + (size_t)k) * gpu_conn_align(fifo_bytes, align);
}
