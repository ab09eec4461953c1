/*
 * links.c - a host communicator's network side: the context's UCX state
 * opened on first need, one link per peer on another node that this rank
 * sends to or receives from, and the identities and failures that travel
 * over them in place of the boards a peer on this node maps.
 */
#include <stdio.h>
#include <string.h>
#include "host_comm.h"
#include "internal.h"
#include "log.h"

dfccl_status_t dfccl_context_net(dfccl_context_t *ctx, dfccl_net_t **net_p)
{
    dfccl_status_t status = DFCCL_OK;

    pthread_mutex_lock(&ctx->net_lock);
    if (ctx->net == NULL) {
        dfccl_net_t *net = NULL;
        status = dfccl_net_open(&net);
        if (status == DFCCL_OK) __atomic_store_n(&ctx->net, net, __ATOMIC_RELEASE);
    }
    *net_p = ctx->net;
    pthread_mutex_unlock(&ctx->net_lock);
    return status;
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
    return DFCCL_OK;
}

dfccl_status_t dfccl_host_net_link(dfccl_comm_t *comm, dfccl_host_t *h, int peer,
                                   const void *addr, size_t addr_len, uint32_t peer_link_ids)
{
    const dfccl_config_t *cfg = &comm->context->config;
    dfccl_net_link_params_t p;
    int sc = h->send_conn[peer], rc = h->recv_conn[peer];

    if (h->net == NULL || addr_len == 0) {
        dfccl_error("comm %#llx: rank %d has no network address for rank %d on host %s",
                    (unsigned long long)comm->key, comm->rank, peer,
                    h->hosts + (size_t)peer * DFCCL_NET_HOST_MAX);
        return DFCCL_ERR_SYSTEM;
    }
    memset(&p, 0, sizeof(p));
    p.addr = addr;
    p.addr_len = addr_len;
    p.host = h->hosts + (size_t)peer * DFCCL_NET_HOST_MAX;
    p.peer = peer;
    p.id_in = h->link_ids + (uint32_t)peer;
    p.id_out = peer_link_ids + (uint32_t)comm->rank;
    p.slot_bytes = cfg->slot_bytes;
    p.nslots = cfg->fifo_slots;
    p.sends = sc >= 0;
    p.receives = rc >= 0;
    p.broken = &comm->broken;
    p.board = comm->board;
    return dfccl_net_link_open(h->net, &p, sc >= 0 ? &h->send_fifos[sc] : NULL,
                               rc >= 0 ? &h->recv_fifos[rc] : NULL, &comm->peer_boards[peer],
                               &h->links[peer]);
}

void dfccl_host_net_release(dfccl_comm_t *comm, dfccl_host_t *h)
{
    if (h->links == NULL) return;
    for (int r = 0; r < comm->size; r++)
        if (h->links[r] != NULL) dfccl_net_link_close(h->net, h->links[r]);
}

void dfccl_host_publish(dfccl_comm_t *comm, uint64_t seq, const dfccl_ident_t *ident)
{
    dfccl_board_post(comm->board, seq, ident);
}

void dfccl_host_send_ident(dfccl_comm_t *comm, uint64_t seq, const dfccl_ident_t *ident)
{
    dfccl_host_t *h = comm->host;

    if (h == NULL || h->nremote == 0) return;
    for (int r = 0; r < comm->size; r++)
        if (h->links[r] != NULL) dfccl_net_link_post_ident(h->net, h->links[r], seq, ident);
}

int dfccl_host_link_failed(const dfccl_comm_t *comm, char *why, size_t len)
{
    const dfccl_host_t *h = comm->host;

    if (h == NULL || h->nremote == 0) return 0;
    for (int r = 0; r < comm->size; r++)
        if (h->links[r] != NULL && dfccl_net_link_failed(h->links[r], why, len)) return 1;
    return 0;
}
