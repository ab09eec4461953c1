/*
 * topology.c - a host communicator's topology (which ranks share a node)
 * and the connections its algorithms use, computed alike on every rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/host/host_comm.h"
#include "backends/host/host.h"
#include "util/log.h"

dfccl_status_t dfccl_host_topology(dfccl_comm_t *comm, dfccl_host_t *h)
{
    size_t n = (size_t)comm->size;

    h->node = malloc(sizeof(int) * n);
    h->numa = malloc(sizeof(int) * n);
    h->local = malloc(sizeof(int) * n);
    h->order = malloc(sizeof(int) * n);
    h->pos = malloc(sizeof(int) * n);
    h->send_conn = malloc(sizeof(int) * n);
    h->recv_conn = malloc(sizeof(int) * n);
    h->peer_segs = calloc(n, sizeof(*h->peer_segs));
    h->links = calloc(n, sizeof(*h->links));
    comm->peer_boards = calloc(n, sizeof(*comm->peer_boards));
    if (h->node == NULL || h->numa == NULL || h->local == NULL || h->order == NULL || h->pos == NULL ||
        h->send_conn == NULL || h->recv_conn == NULL || h->peer_segs == NULL ||
        h->links == NULL || comm->peer_boards == NULL)
        return DFCCL_ERR_NO_MEMORY;
    for (size_t r = 0; r < n; r++) h->send_conn[r] = h->recv_conn[r] = -1;
    return DFCCL_OK;
}

int dfccl_host_sends_to(const dfccl_host_t *h, int from, int to)
{
    for (int k = 0; k < h->all_nsend[from]; k++)
        if (h->all_send[(size_t)from * (size_t)h->max_peers + (size_t)k] == to) return 1;
    return 0;
}

int dfccl_host_fifo_index(const dfccl_host_t *h, int receiver, int sender)
{
    int idx = 0;
    for (int r = 0; r < sender; r++)
        if (r != receiver && h->node[r] == h->node[receiver] &&
            dfccl_host_sends_to(h, r, receiver))
            idx++;
    return idx;
}

/* Within each node, the ring visits the ranks NUMA node by NUMA node (in
 * rank order within one): each ring then crosses between NUMA nodes as few
 * times as it can. */
static void order_by_numa(dfccl_host_t *h, int size)
{
    for (int a = 0; a < size;) {
        int b = a;
        while (b < size && h->node[h->order[b]] == h->node[h->order[a]]) b++;
        for (int i = a + 1; i < b; i++) {   /* insertion sort: stable, short runs */
            int r = h->order[i], j = i;
            while (j > a && h->numa[h->order[j - 1]] > h->numa[r]) {
                h->order[j] = h->order[j - 1];
                j--;
            }
            h->order[j] = r;
        }
        a = b;
    }
    for (int i = 0; i < size; i++) h->pos[h->order[i]] = i;
}

/* Adds peer to the sorted list peers (n entries, room for max). */
static int add_peer(int *peers, int n, int max, int peer)
{
    int i = 0;

    while (i < n && peers[i] < peer) i++;
    if ((i < n && peers[i] == peer) || n == max) return n;
    memmove(peers + i + 1, peers + i, sizeof(int) * (size_t)(n - i));
    peers[i] = peer;
    return n + 1;
}

/* Rank r's send peers: the built-in algorithms', then the plan files'
 * (tmp: size entries). -1 when out of memory. */
static int rank_send_peers(const dfccl_host_t *h, int r, int *peers, int max, int *tmp)
{
    int n = dfccl_plan_send_peers(&h->topo, r, peers, max);

    for (int p = 0; n >= 0 && p < h->nplans; p++) {
        int m = dfccl_plan_file_send_peers(h->plans[p], r, tmp, h->topo.size);
        for (int i = 0; i < m; i++) n = add_peer(peers, n, max, tmp[i]);
    }
    return n;
}

/* Room for any rank's send peers: the built-in algorithms need at most 4 +
 * log2(size); each plan file adds at most its own most. */
static int max_send_peers(const dfccl_host_t *h, int size, int bits, int *tmp)
{
    int max = 4 + bits;

    for (int p = 0; p < h->nplans; p++) {
        int most = 0;
        for (int r = 0; r < size; r++) {
            int m = dfccl_plan_file_send_peers(h->plans[p], r, tmp, size);
            if (m > most) most = m;
        }
        max += most;
    }
    return max;
}

dfccl_status_t dfccl_host_connections(dfccl_comm_t *comm, dfccl_host_t *h)
{
    int size = comm->size, me = comm->rank, bits = 0, *tmp;

    dfccl_topo_derive(size, h->node, h->local, h->order, h->pos, &h->topo.nnodes,
                      &h->topo.uniform);
    order_by_numa(h, size);
    h->topo.size = size;
    h->topo.node = h->node;
    h->topo.local = h->local;
    h->topo.order = h->order;
    h->topo.pos = h->pos;
    while ((1 << bits) < size) bits++;
    if ((tmp = malloc(sizeof(int) * (size_t)size)) == NULL) return DFCCL_ERR_NO_MEMORY;
    h->max_peers = max_send_peers(h, size, bits, tmp);
    h->all_send = malloc(sizeof(int) * (size_t)size * (size_t)h->max_peers);
    h->all_nsend = malloc(sizeof(int) * (size_t)size);
    h->send_peers = malloc(sizeof(int) * (size_t)h->max_peers);
    h->recv_peers = malloc(sizeof(int) * (size_t)size);
    if (h->all_send == NULL || h->all_nsend == NULL || h->send_peers == NULL ||
        h->recv_peers == NULL) {
        free(tmp);
        return DFCCL_ERR_NO_MEMORY;
    }
    for (int r = 0; r < size; r++) {
        h->all_nsend[r] = rank_send_peers(h, r, h->all_send + (size_t)r * (size_t)h->max_peers,
                                          h->max_peers, tmp);
        if (h->all_nsend[r] < 0) {
            free(tmp);
            return DFCCL_ERR_NO_MEMORY;
        }
    }
    free(tmp);
    h->nsend = h->all_nsend[me];
    memcpy(h->send_peers, h->all_send + (size_t)me * (size_t)h->max_peers, sizeof(int) * (size_t)h->nsend);
    h->nrecv = 0;
    for (int r = 0; r < size; r++)
        if (r != me && dfccl_host_sends_to(h, r, me)) h->recv_peers[h->nrecv++] = r;
    if (h->nsend > DFCCL_PLAN_MAX_CONNS || h->nrecv > DFCCL_PLAN_MAX_CONNS) return DFCCL_ERR_UNSUPPORTED;
    h->send_fifos = calloc((size_t)h->nsend + 1, sizeof(dfccl_fifo_t));
    h->recv_fifos = calloc((size_t)h->nrecv + 1, sizeof(dfccl_fifo_t));
    if (h->send_fifos == NULL || h->recv_fifos == NULL) return DFCCL_ERR_NO_MEMORY;
    h->nlocal_in = 0;
    h->nremote = 0;
    for (int i = 0; i < h->nsend; i++) h->send_conn[h->send_peers[i]] = i;
    for (int i = 0; i < h->nrecv; i++) {
        h->recv_conn[h->recv_peers[i]] = i;
        if (h->node[h->recv_peers[i]] == h->node[me]) h->nlocal_in++;
    }
    for (int r = 0; r < size; r++)
        if (h->node[r] != h->node[me] && (h->send_conn[r] >= 0 || h->recv_conn[r] >= 0))
            h->nremote++;
    dfccl_debug("comm %#llx: rank %d on node %d of %d (%s), %d send and %d receive connections,"
                " %d to other nodes", (unsigned long long)comm->key, me, h->node[me],
                h->topo.nnodes, h->topo.uniform ? "uniform" : "uneven", h->nsend, h->nrecv,
                h->nremote);
    return DFCCL_OK;
}

void dfccl_host_topology_free(dfccl_host_t *h)
{
    free(h->node);
    free(h->numa);
    free(h->local);
    free(h->order);
    free(h->pos);
    free(h->hosts);
    free(h->pids);
    free(h->all_send);
    free(h->all_nsend);
    free(h->send_peers);
    free(h->recv_peers);
    free(h->send_conn);
    free(h->recv_conn);
    free(h->send_fifos);
    free(h->recv_fifos);
    free(h->peer_segs);
    free(h->links);
    free(h->plans);
}
