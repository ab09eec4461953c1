/*
 * links.c - a host communicator's network side: one link per peer on
 * another node that this rank sends to or receives from, and the identities
 * and failures that travel over them in place of the boards a peer on this
 * node maps.
 */
#include <stdio.h>
#include <string.h>
#include "backends/host/host_comm.h"
#include "backends/host/host.h"
#include "util/log.h"

/*
 * The RMA protocol's region of rank r for a communicator: a credit word (a
 * cache line) per peer on another node that r sends to, then r's outgoing
 * FIFO to each of them, then its incoming FIFO from each peer on another
 * node that sends to r; each group in rank order. Every rank knows every
 * rank's connections, so it finds anything in anyone's region alone, and
 * the set-up carries one address and key per rank.
 */
static size_t rma_fifo_bytes(const dfccl_config_t *cfg)
{
    size_t b = dfccl_fifo_bytes(cfg->slot_bytes, cfg->fifo_slots);
    return (b + DFCCL_CACHELINE - 1) / DFCCL_CACHELINE * DFCCL_CACHELINE;
}

/* peer's place among r's peers on other nodes that r sends to (sending)
 * or that send to r; -1 when not among them. *count: how many there are. */
static int rma_index(const dfccl_comm_t *comm, const dfccl_host_t *h, int r, int peer, int sending,
                     int *count)
{
    int idx = -1, n = 0;

    for (int q = 0; q < comm->size; q++) {
        if (q == r || h->node[q] == h->node[r]) continue;
        if (sending ? !dfccl_host_sends_to(h, r, q) : !dfccl_host_sends_to(h, q, r)) continue;
        if (q == peer) idx = n;
        n++;
    }
    *count = n;
    return idx;
}

/* Offsets in r's region: the credit word for, and the FIFO to, receiver q;
 * the FIFO from sender s. */
static size_t rma_credit_off(const dfccl_comm_t *comm, const dfccl_host_t *h, int r, int q)
{
    int nout, i = rma_index(comm, h, r, q, 1, &nout);
    return (size_t)i * DFCCL_CACHELINE;
}

static size_t rma_out_off(const dfccl_comm_t *comm, const dfccl_host_t *h, int r, int q)
{
    int nout, i = rma_index(comm, h, r, q, 1, &nout);
    return (size_t)nout * DFCCL_CACHELINE + (size_t)i * rma_fifo_bytes(&comm->context->config);
}

static size_t rma_in_off(const dfccl_comm_t *comm, const dfccl_host_t *h, int r, int s)
{
    int nout, nin, i = rma_index(comm, h, r, s, 0, &nin);
    rma_index(comm, h, r, -1, 1, &nout);
    return (size_t)nout * DFCCL_CACHELINE +
           (size_t)(nout + i) * rma_fifo_bytes(&comm->context->config);
}

static size_t rma_region_bytes(const dfccl_comm_t *comm, const dfccl_host_t *h, int r)
{
    int nout, nin;
    rma_index(comm, h, r, -1, 1, &nout);
    rma_index(comm, h, r, -1, 0, &nin);
    return (size_t)nout * DFCCL_CACHELINE +
           (size_t)(nout + nin) * rma_fifo_bytes(&comm->context->config);
}

dfccl_status_t dfccl_host_net_begin(dfccl_comm_t *comm, dfccl_host_t *h)
{
    dfccl_status_t status;
    char why[160];

    if (!dfccl_net_available(why, sizeof(why))) {
        dfccl_info("comm %#llx spans %d nodes, which needs the network transport: %s",
                   (unsigned long long)comm->key, h->topo.nnodes, why);
        return DFCCL_ERR_UNSUPPORTED;
    }
    status = dfccl_context_net(comm->context, &h->net);
    if (status != DFCCL_OK) return status;
    h->link_ids = dfccl_net_link_ids(h->net, (uint32_t)comm->size);
    if (comm->context->config.net_protocol == DFCCL_NET_RMA) {
        void *base = NULL;
        status = dfccl_net_region_open(h->net, rma_region_bytes(comm, h, comm->rank), &h->region,
                                       &base);
        h->region_base = base;
    }
    return status;
}

dfccl_status_t dfccl_host_net_link(dfccl_comm_t *comm, dfccl_host_t *h, int peer,
                                   const dfccl_host_net_peer_t *np)
{
    const dfccl_config_t *cfg = &comm->context->config;
    dfccl_net_link_params_t p;
    int me = comm->rank, sc = h->send_conn[peer], rc = h->recv_conn[peer];

    if (h->net == NULL || np->addr_len == 0) {
        dfccl_error("comm %#llx: rank %d has no network address for rank %d on host %s",
                    (unsigned long long)comm->key, comm->rank, peer,
                    h->hosts + (size_t)peer * DFCCL_NET_HOST_MAX);
        return DFCCL_ERR_SYSTEM;
    }
    memset(&p, 0, sizeof(p));
    p.addr = np->addr;
    p.addr_len = np->addr_len;
    p.host = h->hosts + (size_t)peer * DFCCL_NET_HOST_MAX;
    p.peer = peer;
    p.id_in = h->link_ids + (uint32_t)peer;
    p.id_out = np->link_ids + (uint32_t)me;
    p.slot_bytes = cfg->slot_bytes;
    p.nslots = cfg->fifo_slots;
    p.sends = sc >= 0;
    p.receives = rc >= 0;
    p.broken = &comm->broken;
    p.board = comm->board;
    if (h->region != NULL) {
        p.region = h->region;
        p.peer_key = np->key;
        p.peer_key_len = np->key_len;
        if (p.sends) {
            p.out_off = rma_out_off(comm, h, me, peer);
            p.credit_off = rma_credit_off(comm, h, me, peer);
            p.peer_fifo = np->region + rma_in_off(comm, h, peer, me);
        }
        if (p.receives) {
            p.in_off = rma_in_off(comm, h, me, peer);
            p.peer_credit = np->region + rma_credit_off(comm, h, peer, me);
        }
    }
    return dfccl_net_link_open(h->net, &p, sc >= 0 ? &h->send_fifos[sc] : NULL,
                               rc >= 0 ? &h->recv_fifos[rc] : NULL, &comm->peer_boards[peer],
                               &h->links[peer]);
}

void dfccl_host_net_release(dfccl_comm_t *comm, dfccl_host_t *h)
{
    if (h->links != NULL)
        for (int r = 0; r < comm->size; r++)
            if (h->links[r] != NULL) dfccl_net_link_close(h->net, h->links[r]);
    /* the links hold it until their peers put nothing more into it */
    if (h->region != NULL) dfccl_net_region_close(h->net, h->region);
    h->region = NULL;
}

void dfccl_host_publish(dfccl_comm_t *comm, uint64_t seq, const dfccl_ident_t *ident)
{
    dfccl_board_post(comm->board, seq, ident);
}

void dfccl_host_send_ident(dfccl_comm_t *comm, uint64_t seq, const dfccl_ident_t *ident)
{
    dfccl_host_t *h = dfccl_comm_host(comm);

    if (h == NULL || h->nremote == 0) return;
    for (int r = 0; r < comm->size; r++)
        if (h->links[r] != NULL) dfccl_net_link_post_ident(h->net, h->links[r], seq, ident);
}

int dfccl_host_link_failed(const dfccl_comm_t *comm, char *why, size_t len)
{
    const dfccl_host_t *h = dfccl_comm_host(comm);

    if (h == NULL || h->nremote == 0) return 0;
    for (int r = 0; r < comm->size; r++)
        if (h->links[r] != NULL && dfccl_net_link_failed(h->links[r], why, len)) return 1;
    return 0;
}
