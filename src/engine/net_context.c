/*
 * net_context.c - the context's network side (the UCP context and worker),
 * opened on the first communicator that spans nodes and shared by every
 * backend's links; its sends are counted in the engine's statistics.
 */
#include "engine/internal.h"

dfccl_status_t dfccl_context_net(dfccl_context_t *ctx, dfccl_net_t **net_p)
{
    dfccl_status_t status = DFCCL_OK;

    pthread_mutex_lock(&ctx->net_lock);
    if (ctx->net == NULL) {
        dfccl_net_t *net = NULL;
        /* every backend's links take the knob's protocol, which must be
         * equal on all ranks, so both ends agree (the GPU side's puts go
         * into its own registered memory, net.h) */
        status = dfccl_net_open(&net, (dfccl_net_protocol_t)ctx->config.net_protocol,
                                ctx->config.net_rendezvous, dfccl_stats_add_net_bytes);
        if (status == DFCCL_OK) __atomic_store_n(&ctx->net, net, __ATOMIC_RELEASE);
    }
    *net_p = ctx->net;
    pthread_mutex_unlock(&ctx->net_lock);
    return status;
}
