/*
 * conn_plan.c - a GPU communicator's connections (conn_plan.h).
 */
#include "backends/gpu/conn_plan.h"
#include "core/exec_cpu.h"   /* gpu_shared.h's executor, as host code sees it */
#include "backends/gpu/gpu_shared.h"
#include "core/plan.h"

void gpu_conn_plan_make(int size, int rank, const int *node, gpu_conn_plan_t *plan)
{
    int me = node != NULL ? node[rank] : 0;

    plan->spans = 0;
    for (int r = 0; node != NULL && r < size && !plan->spans; r++)
        plan->spans = node[r] != me;
    plan->all_peers = !plan->spans && size <= DFCCL_GPU_ALL_PEER_RANKS;
    dfccl_plan_ring_peers(size, node, rank, &plan->ring_prev, &plan->ring_next);
    plan->net_prev = node != NULL && node[plan->ring_prev] != me ? plan->ring_prev : -1;
    plan->net_next = node != NULL && node[plan->ring_next] != me ? plan->ring_next : -1;
}

int gpu_conn_plan_maps(const gpu_conn_plan_t *plan, const int *node, int rank, int r)
{
    if (r == rank || (node != NULL && node[r] != node[rank])) return 0;
    return plan->all_peers || r == plan->ring_next;
}

int gpu_conn_plan_waits_on(const gpu_conn_plan_t *plan, const int *node, int rank, int r)
{
    if (r == rank || (node != NULL && node[r] != node[rank])) return 0;
    return plan->all_peers || r == plan->ring_prev || r == plan->ring_next;
}

int gpu_conn_plan_tells(const gpu_conn_plan_t *plan, const int *node, int rank, int r)
{
    return r != rank && r == plan->ring_next && (node == NULL || node[r] == node[rank]);
}

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
