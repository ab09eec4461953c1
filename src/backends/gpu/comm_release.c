/*
 * comm_release.c - a GPU communicator's end (comm_release.h). Its last
 * reference may go inside a completion, under sq.lock, and its memory
 * cannot go while the kernel runs (cudaFree would wait for it): it joins
 * a list that the proxy thread frees between launches.
 */
#include <stdlib.h>
#include "backends/gpu/comm_release.h"
#include "backends/gpu/direct.h"
#include "backends/gpu/net_side.h"
#include "backends/gpu/peer_watch.h"

void gpu_comm_free_resources(dfccl_gpu_t *g, dfccl_gpu_comm_t *gc, int size, int rank)
{
    for (int p = 0; gc->peer_base != NULL && p < size; p++)
        if (p != rank && gc->peer_base[p] != NULL) cudaIpcCloseMemHandle(gc->peer_base[p]);
    gpu_direct_maps_release(gc, size);
    gpu_net_close(g, gc);   /* its host FIFOs go once the links let them (gpu_net_reap) */
    if (gc->region != NULL) cudaFree(gc->region);
    if (gc->index >= 0) {
        pthread_mutex_lock(&g->sq.lock);
        g->sq.comm_used[gc->index] = 0;
        pthread_mutex_unlock(&g->sq.lock);
    }
}

void gpu_comm_free(dfccl_gpu_comm_t *gc)
{
    free(gc->node);
    free(gc->peer_base);
    free(gc->plans);
    gpu_plan_peers_free(&gc->plan_peers);
    gpu_plan_peers_free(&gc->plan_senders);
    free(gc->setup_scratch);
    gpu_watch_free(gc);
    dfccl_shm_release(&gc->board_seg);
    free(gc);
}

void gpu_free_dead(dfccl_gpu_t *g)
{
    dfccl_gpu_comm_t *list;

    pthread_mutex_lock(&g->dead.lock);
    list = g->dead.list;
    g->dead.list = NULL;
    pthread_mutex_unlock(&g->dead.lock);
    while (list != NULL) {
        dfccl_gpu_comm_t *gc = list;
        gpu_dead_t *info = (gpu_dead_t *)(gc + 1);
        list = gc->next_dead;
        gpu_comm_free_resources(g, gc, info->size, info->rank);
        gpu_comm_free(gc);
    }
}

void dfccl_gpu_comm_release(dfccl_comm_t *comm)
{
    dfccl_gpu_comm_t *gc = gpu_comm_of(comm);
    dfccl_gpu_t *g = gpu_ctx_of(comm->context)->gpu;
    gpu_dead_t *info;

    if (gc == NULL) return;   /* its set-up failed before it had one */
    info = (gpu_dead_t *)(gc + 1);
    if (g != NULL && gc->ready) gpu_watch_remove(g, gc);   /* the engine frees comm next */
    if (g == NULL || (!gc->ready && gc->region == NULL && gc->index < 0)) {
        gpu_comm_free(gc);
        return;
    }
    info->size = comm->size;
    info->rank = comm->rank;
    /* not g->sq.lock: the last reference may go inside a completion, which
     * holds it; the proxy finds the list within its 10 ms idle wait */
    pthread_mutex_lock(&g->dead.lock);
    gc->next_dead = g->dead.list;
    __atomic_store_n(&g->dead.list, gc, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g->dead.lock);
}
